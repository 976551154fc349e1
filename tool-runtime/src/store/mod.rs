//! One store interface for pending operations, first-time approvals, journal and audit records.

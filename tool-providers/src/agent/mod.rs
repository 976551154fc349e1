//! The multi-turn agent loop over any client.

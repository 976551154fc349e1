//! HTTP clients for every provider.

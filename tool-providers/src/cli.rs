//! `tools schema --provider` and `tools decode` for the `tools` command line.

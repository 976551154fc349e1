//! Pure provider codecs: JSON in, JSON out, no IO.

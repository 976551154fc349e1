//! Pre-selection of tools for large catalogs (seed 004 `pickTools`), never running anything.

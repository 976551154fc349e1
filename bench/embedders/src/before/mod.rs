pub mod grouped;

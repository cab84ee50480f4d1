//! TODO(module): dtype.

//! TODO(module): wire.

//! The NEFF container (placeholder until the NEFF issue lands).

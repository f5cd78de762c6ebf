//! Conversions between core domain types and wire messages.

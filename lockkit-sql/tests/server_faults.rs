//! Server faults during a hold.

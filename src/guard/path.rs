//! Path confinement to configured roots. (Stub.)

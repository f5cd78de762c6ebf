//! qmgr

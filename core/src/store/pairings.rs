//! Pairings (a supervisor session watching a worker session) and their verdicts.

"""Testing helpers shipped with parity; nothing here is used by a normal run."""

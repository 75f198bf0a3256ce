"""The host <-> array join: the LUN directory and the stage that applies it between polls and the engine."""

"""Storage backends and the contract they share."""

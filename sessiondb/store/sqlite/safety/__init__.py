"""What only a file on disk needs: identity checks, damage containment, the spool."""

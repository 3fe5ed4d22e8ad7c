"""The pure core: no I/O, no clock, no global randomness. Time and randomness are arguments."""

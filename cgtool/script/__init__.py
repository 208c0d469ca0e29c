"""The script contract: loading a user script, calling setup/inputs/step, the user's frames, error records."""

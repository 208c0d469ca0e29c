"""Every rank hangs in its step (a stand-in for a deadlock): only cgtool's wall timeout ends the run."""
import time


def step():
    time.sleep(3600)

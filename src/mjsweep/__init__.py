"""mjsweep: sweeps of single-threaded PPO trainings over MuJoCo robot variants."""

__version__ = "0.1.0"

"""Training: variables and variable scopes, initializers, optimizers, learning-rate
schedules, the global step and the Saver. Imports api, autodiff and below."""

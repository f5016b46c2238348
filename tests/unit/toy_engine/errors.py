"""The toy engine's error rules: 7777 is its "try again"."""


def classify(engine, errno, msg):
    return ("temporary", None) if errno == 7777 else None

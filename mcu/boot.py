# Minimal on purpose: nothing here may fail or wait. main.py decides between link mode and REPL mode.

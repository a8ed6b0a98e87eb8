"""The catalog layer: GPU specs, name normalisation, instance-type tables, cost per TFLOP.

Pure data and functions over it; imports nothing above the shared layer.
"""

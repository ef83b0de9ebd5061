# The server's release version: the package is released with the node from
# the same commit and speaks its wire surface (docs/python.md, "Versions").
__version__ = "0.10.0"

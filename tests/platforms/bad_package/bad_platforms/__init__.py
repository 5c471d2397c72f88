"""A record named like an in-tree platform (cpu): refused, the in-tree one stays."""

from dabench.core.platforms import Platform

CLASH = Platform("cpu")

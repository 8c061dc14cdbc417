"""The sweep folder's on-disk contract: file names, typed files, CSV columns and readers."""

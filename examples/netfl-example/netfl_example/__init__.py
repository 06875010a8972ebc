"""An example netfl extension (docs/extending.md): hierarchical FedProx with edge momentum."""

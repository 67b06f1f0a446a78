//! The merged tool catalog: exposed names, minimal forms and full definitions.

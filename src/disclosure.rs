//! Progressive disclosure: the `tool_descriptions` resource and the gate.

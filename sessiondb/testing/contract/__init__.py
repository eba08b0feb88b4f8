"""The contract suite (sessiondb.testing): every module runs over the backends the plugin is given."""

"""Recording a run (trace -> metrics), storing it atomically, and plotting it."""

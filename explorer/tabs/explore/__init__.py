"""The Explore tab (tab.py) and its sub-views, each wired to its controllers: the decode controls, the layout of its
splitters, the Reading box and the measures' views, the corpus menus, exports, interventions, the neuron view, the
report card and the timeline of training snapshots."""

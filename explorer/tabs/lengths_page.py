"""The Positional tab's length-experiment page: the panel (explorer/widgets/lengths_panel.py) wired to its controller
(explorer/controllers/lengths.py); the main window opens the Explore tab when a point's model and sentence are opened."""

from __future__ import annotations

from explorer.controllers.lengths import LengthsController
from explorer.widgets.lengths_panel import LengthsPanel


def lengths_page(controller: LengthsController) -> LengthsPanel:
    """The panel, showing the controller's state and sending it the user's requests."""
    panel = LengthsPanel()
    panel.run_requested.connect(controller.run)
    panel.cancel_requested.connect(controller.cancel)
    panel.save_requested.connect(controller.save)
    panel.point_clicked.connect(controller.open_point)
    controller.progress.connect(panel.show_progress)
    controller.running_changed.connect(panel.set_running)
    controller.message.connect(panel.show_message)
    controller.ready.connect(panel.show_result)
    panel.set_running(controller.running)
    panel.show_result(controller.result)
    return panel

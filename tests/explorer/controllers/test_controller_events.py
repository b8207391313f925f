"""The controllers' events are declared once, on their classes (psygnal Signals, documented where declared): a view's
method connected to one receives its emissions, a slot that needs more than an event gives is refused when it is
connected (not when the event first fires), and a view that is gone is not kept alive by the controller it listened
to."""

from __future__ import annotations

import dataclasses
import gc
import sys
import weakref

import pytest
from psygnal import Signal, SignalInstance

from explorer.controllers.runner import Runner


def declared(cls: type) -> set[str]:
    """The events a controller class declares."""
    return {name for name, value in vars(cls).items() if isinstance(value, Signal)}


def window_controllers(controllers) -> list:
    return [getattr(controllers, field.name) for field in dataclasses.fields(controllers) if field.type != "Runner"]


def test_every_controller_declares_its_events_once_on_its_class(controllers):
    objects = window_controllers(controllers)
    assert len(objects) == 15 and not any(isinstance(each, Runner) for each in objects)
    for controller in objects:
        cls = type(controller)
        events = declared(cls)
        assert "message" in events or "failed" in events, f"{cls.__name__} declares no event to say what went wrong"
        ad_hoc = [name for name, value in vars(controller).items() if isinstance(value, SignalInstance) and name not in events]
        assert not ad_hoc, f"{cls.__name__} makes events of its own at run time: {ad_hoc}"
        documented = (cls.__doc__ or "") + (sys.modules[cls.__module__].__doc__ or "")
        undocumented = sorted(name for name in events if f"``{name}" not in documented)
        assert not undocumented, f"{cls.__name__} declares events its docstrings do not describe: {undocumented}"


class View:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def show_message(self, text: str) -> None:
        self.seen.append(text)


def test_a_views_method_receives_the_event_and_a_view_gone_is_freed(controllers):
    message = controllers.explore.message
    connected_before = len(message)
    view = View()
    message.connect(view.show_message)
    controllers.explore.translate("the cat sat")  # no model open: the controller says so on its message event
    assert view.seen and "Open or train a model first" in view.seen[0]
    gone = weakref.ref(view)
    del view
    gc.collect()
    assert gone() is None, "the controller kept a view alive after it was gone"
    message.emit("said to nobody")  # the view gone was disconnected: nothing fails
    assert len(message) == connected_before


def test_a_slot_needing_more_than_an_event_gives_is_refused_when_connected(controllers):
    with pytest.raises(ValueError, match="requires at least 2"):
        controllers.explore.message.connect(lambda text, more: None)
    with pytest.raises(ValueError, match="requires at least 3"):
        controllers.interventions.ready.connect(lambda tool, result, more: None)
    controllers.interventions.ready.connect(lambda tool, result: None)  # as many as it gives: accepted

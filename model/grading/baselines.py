"""The perturbation baselines a report card grades beside the app's measures, and the random order.

* **Leave-one-out** (the reference of the τ columns): the drop of log p(reference piece) when one source piece is
  left out of the sentence (the pieces after it move up), or one target-prefix piece out of the decoder's input.
* **Occlusion**, **LIME** and **KernelSHAP** from Captum (``pip install 'transformer-explorer[grading]'``), over the
  *presence* of each source piece: 1 keeps it, 0 hides it (its id replaced by the pad id, which the model masks:
  model/grading/scoring.py), the model's output the probability of each step's reference piece. Occlusion hides one
  piece at a time (of the source, and of the target prefix); LIME fits a weighted linear model to ``lime_samples``
  random subsets, KernelSHAP to ``shap_samples`` coalitions weighted by the Shapley kernel. Both fit by weighted
  least squares (with a ridge of 1e-3, so that no scikit-learn is needed) and draw the same samples for every step of
  a pair (seeded), so one pass of a sample serves them all.
* **Random order**: a seeded random score per piece, the chance level of every column.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import torch

from model.family import Bundle, Positions, capabilities_of
from model.grading.methods import AttributionMethod, MethodMaps, MethodSettings, Reading, register_method

RIDGE = 1e-3  # LIME's and KernelSHAP's linear fits: a small ridge keeps a fit on few samples defined
NO_CAPTUM = "needs Captum: pip install 'transformer-explorer[grading]'"


def cannot_hide(bundle: Bundle) -> str:
    """Why pieces of ``bundle``'s sentences cannot be hidden in place ('' when they can)."""
    if capabilities_of(bundle.model).hides_pieces:
        return ""
    if bundle.family.capabilities.positions is Positions.PRETRAINED:  # a layout whose position ids skip padding
        why = "its positions skip padding: a pad moves the pieces after it"
        return f"{bundle.config.describe()} cannot hide a piece in place ({why})"
    return f"{bundle.family.title} cannot hide a piece in place (its pieces are read in order, a pad among them included)"


@functools.cache
def captum_installed() -> bool:
    return importlib.util.find_spec("captum") is not None


def _captum_attr() -> Any:
    # deferred: Captum is optional (the grading extra), and loads only when a card asks for its methods
    import captum.attr

    return captum.attr


class LinearModel(Protocol):
    """What ``weighted_least_squares`` asks of Captum's ``LinearModel``: to be given its weights and intercept."""

    def _construct_model_params(self, *, norm_type: str | None, weight_values: torch.Tensor, bias_value: torch.Tensor) -> None: ...


def weighted_least_squares(
    model: LinearModel, dataloader: Iterable[Sequence[torch.Tensor]], construct_kwargs: dict, **_: object
) -> dict:
    """Captum's ``LinearModel`` training function: weighted ridge regression with an intercept, in closed form. The
    ``dataloader`` gives batches of (samples [n, S], targets [n], and optionally weights [n])."""
    batches = list(dataloader)
    x = torch.cat([batch[0] for batch in batches]).double().numpy()  # [N, S]
    y = torch.cat([batch[1] for batch in batches]).double().numpy().reshape(-1)  # [N]
    w = torch.cat([batch[2] for batch in batches]).double().numpy().reshape(-1) if len(batches[0]) == 3 else np.ones(len(y))
    design = np.concatenate([x, np.ones((len(x), 1))], 1)  # [N, S + 1]
    weighted = design * w[:, None]
    penalty = RIDGE * np.eye(design.shape[1])
    penalty[-1, -1] = 0.0  # the intercept is not shrunk
    solution = np.linalg.solve(design.T @ weighted + penalty, weighted.T @ y)  # [S + 1]
    weights = torch.tensor(solution[:-1], dtype=torch.float32)[None]  # [1, S]
    model._construct_model_params(norm_type=None, weight_values=weights, bias_value=torch.tensor([solution[-1]]).float())
    return {}


def _presence_forward(scorer, prefix: bool = False):
    """Captum's forward function: presence [B, P] (1 keeps a piece) -> the probability of every step's reference
    [B, T], the source's pieces (or the target prefix's) hidden where the presence is 0."""

    def forward(presence: torch.Tensor) -> torch.Tensor:
        keep = presence.detach().cpu().numpy() > 0.5
        found = scorer.prefix_hidden_all(keep) if prefix else scorer.hidden_all(keep)
        return torch.from_numpy(np.exp(found)).float()

    return forward


@register_method
class LeaveOneOut(AttributionMethod):
    name, label, baseline, reference = "leave-one-out", "Leave-one-out", True, True
    what = "the drop of log p(reference) when one piece is left out of the sentence"

    def maps(self, reading: Reading) -> MethodMaps:
        scorer = reading.scorer
        source = scorer.full[:, None] - scorer.left_out().T  # [T, S]
        prefix = scorer.full[:, None] - scorer.prefix_left_out()  # [T, T], NaN where not read
        return MethodMaps(source, prefix)


class CaptumMethod(AttributionMethod):
    """A Captum method over the presence of each source piece (see the module's docstring)."""

    baseline = True

    def source_unsupported(self, bundle: Bundle) -> str:
        return cannot_hide(bundle) or ("" if captum_installed() else NO_CAPTUM)

    def prefix_unsupported(self, bundle: Bundle) -> str:
        return f"{self.label} is run over the source pieces"


class SampledMethod(CaptumMethod):
    """LIME or KernelSHAP: one fit per step, on samples drawn alike for every step (seeded)."""

    def explainer(self, forward) -> Any:
        raise NotImplementedError

    def samples(self, settings: MethodSettings) -> int:
        raise NotImplementedError

    def maps(self, reading: Reading) -> MethodMaps:
        explainer = self.explainer(_presence_forward(reading.scorer))
        presence = torch.ones(1, reading.case.n_source)
        n = self.samples(reading.settings)
        rows = []
        for step in range(reading.case.n_steps):
            with torch.random.fork_rng():
                torch.manual_seed(reading.settings.seed)  # the same samples at every step: their passes are remembered
                found = explainer.attribute(presence, baselines=0.0, target=step, n_samples=n, perturbations_per_eval=n)
            rows.append(found[0].double().numpy())
        return MethodMaps(np.stack(rows))


@register_method
class Occlusion(CaptumMethod):
    name, label = "occlusion", "Occlusion"
    what = "the drop of p(reference) when one piece is hidden (Captum's Occlusion, pad in place)"

    def prefix_unsupported(self, bundle: Bundle) -> str:
        return self.source_unsupported(bundle)

    def maps(self, reading: Reading) -> MethodMaps:
        """Every step at once: Captum attributes each of the forward's outputs (one per step) [T, pieces]."""
        n_steps, n_source = reading.case.n_steps, reading.case.n_source
        source = self._occlusion(_presence_forward(reading.scorer), n_source).reshape(n_steps, n_source)
        prefix = np.full((n_steps, n_steps), np.nan)
        if n_steps > 1:
            found = self._occlusion(_presence_forward(reading.scorer, prefix=True), n_steps - 1).reshape(n_steps, n_steps - 1)
            for step in range(1, n_steps):
                prefix[step, 1 : step + 1] = found[step, :step]  # the pieces the step reads
        return MethodMaps(source, prefix)

    @staticmethod
    def _occlusion(forward, n_pieces: int) -> np.ndarray:
        explainer = _captum_attr().Occlusion(forward)
        presence = torch.ones(1, n_pieces)
        found = explainer.attribute(presence, sliding_window_shapes=(1,), baselines=0.0, perturbations_per_eval=n_pieces)
        return found.double().numpy()


def _linear_model() -> Any:
    # deferred: as _captum_attr
    from captum._utils.models.linear_model import LinearModel

    return LinearModel(train_fn=weighted_least_squares)


@register_method
class Lime(SampledMethod):
    name, label = "lime", "LIME"
    what = "a weighted linear model of p(reference) on random subsets of the source pieces (Captum's Lime)"

    def explainer(self, forward) -> Any:
        return _captum_attr().Lime(forward, interpretable_model=_linear_model())

    def samples(self, settings: MethodSettings) -> int:
        return settings.lime_samples


@register_method
class KernelShap(SampledMethod):
    name, label = "kernel-shap", "KernelSHAP"
    what = "Shapley values of the source pieces for p(reference), estimated from sampled coalitions (Captum's KernelShap)"

    def explainer(self, forward) -> Any:
        explainer = _captum_attr().KernelShap(forward)
        explainer.interpretable_model = _linear_model()  # its own is scikit-learn's
        return explainer

    def samples(self, settings: MethodSettings) -> int:
        return settings.shap_samples


@register_method
class RandomOrder(AttributionMethod):
    name, label, baseline, reads_model = "random", "Random order", True, False
    what = "a seeded random score per piece: the chance level of every column"

    def maps(self, reading: Reading) -> MethodMaps:
        n, s = reading.case.n_steps, reading.case.n_source
        rng = np.random.default_rng([reading.settings.seed, reading.index])
        prefix = rng.random((n, n))
        prefix[np.triu_indices(n, k=1)] = np.nan
        return MethodMaps(rng.random((n, s)), prefix)

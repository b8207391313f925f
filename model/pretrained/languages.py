"""A multilingual model's languages: NLLB's, M2M100's and mBART-50's language codes, the source language its
tokenizer marks the input with, and the target language its generation forces first.

NLLB and mBART-50 tokenizers put the source language's code before (NLLB) or around the text (``src_lang``); the
target language is the first token decoding must produce (the generation config's ``forced_bos_token_id``): the app's
decoding forces it (model/decoding/stepper.py, model/decoding/greedy.py: ``forced_first_id``), and the trace shows it
as given. A model without language codes has no languages: choosing one is refused in one line.
"""

from __future__ import annotations

import re
from typing import Any

from model.errors import UserError

CODE = re.compile(r"^(__[a-z]{2,3}(_[A-Za-z]+)?__|[a-z]{2,3}_[A-Z][a-z]{3}|[a-z]{2}_[A-Z]{2})$")  # __fr__, fra_Latn, fr_XX


def language_codes(tokenizer: Any) -> list[str]:
    """The language codes a tokenizer knows (its ``lang_code_to_id``, else the special tokens shaped as codes), in its
    order; [] for a tokenizer that marks no language (it has no ``src_lang``)."""
    if not hasattr(tokenizer, "src_lang"):
        return []
    known = getattr(tokenizer, "lang_code_to_id", None)
    if isinstance(known, dict) and known:
        return [str(code) for code in known]
    return [str(token) for token in getattr(tokenizer, "additional_special_tokens", []) if CODE.match(str(token))]


def code_id(tokenizer: Any, code: str) -> int:
    """The token id of a language code (M2M100's tokenizer names "fr" by its token "__fr__")."""
    get_lang_id = getattr(tokenizer, "get_lang_id", None)
    return int(get_lang_id(code)) if callable(get_lang_id) else int(tokenizer.convert_tokens_to_ids(code))


def check_code(codes: list[str], code: str, side: str) -> None:
    """A UserError (one line) unless ``code`` is one of the model's ``codes``."""
    if not codes:
        raise UserError(f"this model has no language codes: it reads and writes one language pair (no {side} language to choose)")
    if code not in codes:
        shown = ", ".join(codes[:6]) + (f" … ({len(codes)} in all)" if len(codes) > 6 else "")
        raise UserError(f"{code!r} is not one of this model's language codes ({shown})")

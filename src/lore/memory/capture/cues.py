"""What a sentence of a conversation is: the cues shared by the digest and the session summariser.

Regular expressions over one sentence (or one message): a decision taken,
work done, something learned, a fix that worked, a user's correction,
something still open, a user confirming what the agent said, and a
statement of how the project does things. Both the PreCompact digest
(:mod:`lore.memory.capture.digest`) and the offline session summariser
(:mod:`lore.sessions.extractive`) read them from here, so a decision is the
same thing in both.
"""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(])|\n+")

DECISION = re.compile(
    r"\b(?:we|i|let's|let us|team)\s+(?:have\s+|'ve\s+|will\s+|'ll\s+)?"
    r"(?:decided|chose|choose|settled on|agreed|picked|opted|went with|are going with|go with)\b"
    r"|\bdecided to\b|\bdecision\b|\bwe(?:'ll| will| should) (?:use|keep|switch|go with|stick with)\b"
    r"|\b(?:will|'ll) use\b|\bswitch(?:ed|ing)? (?:over )?to\b|\bgoing with\b",
    re.I,
)
DONE = re.compile(
    r"^(?:i|we)(?:'ve| have)?\s+(?:now\s+|also\s+|just\s+|finally\s+)?"
    r"(?:added|fixed|updated|created|implemented|removed|deleted|renamed|refactored|wrote|changed|"
    r"moved|installed|configured|merged|committed|rewrote|replaced|migrated|ran|tested|finished|"
    r"completed|built|set up|extracted|split|bumped|upgraded|documented)\b"
    r"|^(?:done|fixed|added|updated|implemented|created|removed)\b",
    re.I,
)
LEARNED = re.compile(
    r"\b(?:turns out|it turned out|root cause|the cause|because|learned|lesson|note that|apparently|"
    r"the (?:problem|issue|bug|reason) (?:is|was)|this means|so that's why)\b",
    re.I,
)
FIXED = re.compile(
    r"\b(?:fixed|resolved|solved|works now|now works|working now|passes now|now pass(?:es)?|"
    r"all (?:tests )?pass(?:ing)?|tests? pass(?:ed|es)?|the fix|fix was|succeeded|that did it)\b",
    re.I,
)
CORRECTION = re.compile(
    r"^(?:no\b|nope\b|actually\b|don't\b|do not\b|never\b|stop\b|instead\b|rather\b|wrong\b|"
    r"that's (?:wrong|not)\b|not quite\b|i (?:said|meant|prefer|want)\b|we prefer\b|prefer\b|please don't\b)"
    r"|\b(?:instead of|rather than|i prefer|we prefer|please use|don't use|do not use|shouldn't|"
    r"use \S+ instead)\b",
    re.I,
)
OPEN = re.compile(
    r"\b(?:todo|still (?:need|have|to)|next step|remaining|not yet|open question|follow[- ]?up|"
    r"later|need to|needs to|unresolved|pending|tbd|blocked|haven't)\b",
    re.I,
)
# A user confirming what the agent just said or did ("yes, exactly", "perfect, that works").
CONFIRMATION = re.compile(
    r"^\W*(?:yes|yep|yeah|exactly|correct|right|perfect|great|lgtm|looks good|that works|"
    r"that's (?:right|correct|it)|confirmed|agreed)\b",
    re.I,
)
# How the project does things, stated as a fact ("this project uses barrel exports").
CONVENTION = re.compile(
    r"\b(?:this|the) (?:project|repo|repository|codebase|team|app) (?:uses|follows|prefers|keeps|puts|has)\b"
    r"|\b(?:by|the) convention\b|\bwe always\b|\balways (?:use|run|put|keep)\b"
    r"|\bthe (?:pattern|rule) (?:here )?is\b",
    re.I,
)


def sentences(text: str) -> list[str]:
    """The sentences of a message the cues are matched against: split at sentence
    ends and line breaks, whitespace folded, list and quote marks dropped; code
    fences, table rows and fragments under 8 characters left out."""
    out = []
    for part in _SENTENCE.split(text):
        sentence = " ".join(part.split()).lstrip("-*> ").strip()
        if len(sentence) >= 8 and not sentence.startswith(("```", "|")):
            out.append(sentence)
    return out

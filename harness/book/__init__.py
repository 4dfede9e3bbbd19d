"""The read side: what the book's pages compute from the lab's data. A page imports its chapter's face
(harness.book.chapters.chN) and the shared modules it uses by name, or harness.book.page for the shared calls at once;
its first cell calls harness.book.render.setup() (the chart theme and the offline renderer), since importing any of
these sets nothing up."""

"""What parity never writes and never leaves: secrets masked in every line and file
(``redact``), URLs reduced to what is safe to write or refused (``urls``), and its own
staging and fetched copies removed on every exit path (``scratch``)."""

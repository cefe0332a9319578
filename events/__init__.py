"""The public event contract of lavalog: observation and decision schemas, codecs, topics.

Owns the records on every topic and Volcano's vocabulary (`volcano/`). Pure: must not
import anything else of lavalog, nor any I/O library. Other services read these
topics, so changes are additive only.
"""

"""The public event contract of lavalog: observation and decision schemas, codecs, topics.

Pure: no I/O. Other services read these topics, so changes are additive only.
"""

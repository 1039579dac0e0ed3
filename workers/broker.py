"""The embedded broker (`CELERY_BROKER_URL=filesystem://`): kombu's filesystem transport, with
each message written whole before it appears under its name.

Kombu's own transport opens the message file and then writes it; a consumer that lists the
folder in between takes an empty file, fails to decode it and its worker stops (seen with beat
sending every two seconds). Here the message is written under a hidden name and renamed into
place: a consumer sees a whole message or none."""

import os
import uuid
from time import monotonic

from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # Consumers take only "<stamp>_<uuid>.<queue>.msg": a dot-first name is never theirs.
        hidden = os.path.join(self.data_folder_out, f".{name}.tmp")
        try:
            with open(hidden, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(hidden, final)
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel

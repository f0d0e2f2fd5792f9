"""The Mattermost chat adapter (``gateway.mattermost``): see ``_adapter`` for how it listens and
answers, ``_people`` for who a Mattermost account is in Kubernetes."""

from sleuth_gateway.mattermost._adapter import MATTERMOST_PREFIX, MattermostAdapter
from sleuth_gateway.settings import MattermostPerson, MattermostSettings

__all__ = ["MATTERMOST_PREFIX", "MattermostAdapter", "MattermostPerson", "MattermostSettings"]

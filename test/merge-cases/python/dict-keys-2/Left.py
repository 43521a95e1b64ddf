import hashlib
import secrets
import time

from .storage import SessionStore

COOKIE_SETTINGS = {
    "name": "sid",
    "http_only": True,
    "secure": True,
    "domain": None,
    "same_site": "Lax",
    "max_age": 3600,
}


class SessionManager:
    def __init__(self, store: SessionStore, ttl: int = 3600):
        self.store = store
        self.ttl = ttl

    def open(self, user_id: str) -> str:
        token = secrets.token_urlsafe(32)
        self.store.put(self._key(token), {"user": user_id, "at": time.time()}, self.ttl)
        return token

    def lookup(self, token: str):
        return self.store.get(self._key(token))

    def close(self, token: str) -> None:
        self.store.delete(self._key(token))

    @staticmethod
    def _key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

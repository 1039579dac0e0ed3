"""The accounts' pages and API, one list each for console/urls.py: one's own account (profile),
service accounts' tokens (tokens), and the login lockouts (lockouts). The API's order here is
the OpenAPI document's."""

from console.accounts.lockouts import urls as lockouts
from console.accounts.profile import urls as profile
from console.accounts.tokens import urls as tokens

urlpatterns = [*profile.urlpatterns, *tokens.urlpatterns, *lockouts.urlpatterns]

# Under /api/v1/ (console/urls.py).
api_urlpatterns = [
    *profile.api_urlpatterns,
    *tokens.api_urlpatterns,
    *lockouts.api_urlpatterns,
]

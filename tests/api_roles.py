"""What an API endpoint answers each role of tests/roles.py: 401 to an anonymous caller (no
credentials), 200 to a role it lets in, 403 to the others."""


def assert_api_answers(response, role, allowed):
    """`allowed`: the roles let in. Returns the status expected, for the checks that follow."""
    expected = 401 if role is None else (200 if role in allowed else 403)
    assert response.status_code == expected, response.content[:300]
    return expected

import pytest

pytestmark = pytest.mark.django_db


def test_home_page_says_what_ctrlscope_is(client):
    response = client.get("/")
    assert response.status_code == 200
    assert b"visual debugger for Kubernetes controllers" in response.content

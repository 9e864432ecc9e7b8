from django.urls import path, re_path

from dashboard.consumers import NotFoundConsumer, SimulationConsumer

websocket_urlpatterns = [
    path("ws/sim/<slug:sim_id>/", SimulationConsumer.as_asgi()),
    re_path(r"", NotFoundConsumer.as_asgi()),
]

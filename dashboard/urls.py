from django.urls import path

from dashboard import compare_views, fork_views, views

urlpatterns = [
    path("", views.home, name="home"),
    path("sims/", views.sim_list, name="sim-list"),
    path("sim/new", views.sim_new, name="sim-new"),
    path("sim/<slug:sim_id>/", views.sim_page, name="sim"),
    path("sim/<slug:sim_id>/stop", views.sim_stop, name="sim-stop"),
    path("sim/<slug:sim_id>/reopen", views.sim_reopen, name="sim-reopen"),
    path("sim/<slug:sim_id>/delete", views.sim_delete, name="sim-delete"),
    path("sim/<slug:sim_id>/fork", fork_views.sim_fork, name="sim-fork"),
    path("sim/<slug:sim_id>/scenario.yaml", views.sim_export, name="sim-export"),
    path("sim/<slug:sim_id>/report.json", views.sim_report, name="sim-report"),
    path("sim/<slug:sim_id>/status.json", views.sim_status, name="sim-status"),
    path("sim/<slug:sim_id>/why/<int:seq>", views.sim_why, name="sim-why"),
    path("sim/<slug:sim_id>/records.json", views.sim_records, name="sim-records"),
    path("sim/<slug:sim_id>/pod/<str:namespace>/<str:name>", views.pod_detail, name="pod-detail"),
    path(
        "sim/<slug:sim_id>/syncs/<str:controller>/<str:namespace>/<str:name>",
        views.sync_history,
        name="sync-history",
    ),
    # The compare page (docs/compare.md): A and B side by side, any two running simulations.
    path("compare/new", compare_views.compare_new, name="compare-new"),
    path("compare/open", compare_views.compare_open, name="compare-open"),
    path("compare/<slug:a_id>/<slug:b_id>/", compare_views.compare_page, name="compare"),
    path("compare/<slug:a_id>/<slug:b_id>/view", compare_views.compare_view, name="compare-view"),
    path("compare/<slug:a_id>/<slug:b_id>/control", compare_views.compare_control, name="compare-control"),
]

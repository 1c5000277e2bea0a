"""The course on JupyterHub (`make hub`, docs/hub.md): a hub on 127.0.0.1 for the class on a roster.

    roster          the roster file: names, roles, password hashes; `passwords` gives new ones
    accounts        each student's own Unix user; the course folder made safe to share
    authenticator   log-in against the roster
    spawner         each person's server: students as themselves, instructors as the course's owner
    validate_button the students' Validate button, answered by the course's grader
    control         start, stop, status (the processes it started, by their ids)
    settings        the running hub's settings (state folder, ports, exchange)
    jupyterhub_config.py   what `jupyterhub -f` reads
"""

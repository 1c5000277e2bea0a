"""The course on JupyterHub (`make hub`, docs/hub.md): a hub for a class of untrusted students.

    control         start, stop, status (the processes it started, by their ids); `passwords`
    preflight       everything checked before anything starts (a class named, the course's owner, the walls, the port)
    roster          the roster file: names, roles, password hashes; the demo class
    authenticator   log-in against the roster: throttled, a new session at each log-in, on the hub's own name
    accounts        each student's own Unix user; the course folder made safe to share
    exchange        nbgrader's exchange laid out and checked; the exchange classes every part uses on it
    configs         the servers' configs per role; the release, as the course's owner
    spawner         each person's server: students as themselves, confined; instructors as the course's owner
    limits          what each student may use (StudentLimits), and her cgroup
    disks           file systems of their own: each home, the exchange
    confine         the bubblewrap room a student's server runs in
    kernels         at most N kernels in a student's lab
    validate_button the students' Validate button, answered by the course's grader
    settings        the running hub's settings (state folder, ports, exchange, limits)
    jupyterhub_config.py   what `jupyterhub -f` reads: one origin per person, roles, the idle culler
"""

from sanlens.cli import main

raise SystemExit(main())

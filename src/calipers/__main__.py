from calipers.cli import main

main()

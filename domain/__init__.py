"""What the knowledge base is about, shared by the ETL and the site: the schema of
every table and field, units, the sizing math, runtimes and the roofline."""

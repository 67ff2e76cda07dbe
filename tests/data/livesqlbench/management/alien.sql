-- Constructed for pytest-queryeval's LiveSQLBench Management oracle: NOT the benchmark's data.
-- One table of the published `alien` schema (livesqlbench.github.io public/data/alien/schema.json
-- @1b6562e: table `observatories`, its columns and types as published); the rows are made up.
-- Instance M_1 and its follow-up read no table: the database only has to exist.
CREATE TABLE observatories (
    observstation char(60) PRIMARY KEY,
    weathprofile varchar(40),
    seeingprofile varchar(50),
    atmostransparency numeric(5,3),
    lunarstage varchar(25),
    lunardistdeg numeric(7,2),
    solarstatus varchar(35),
    geomagstatus varchar(35),
    sidereallocal char(8),
    airtempc numeric(5,2),
    humidityrate numeric(6,3),
    windspeedms numeric(4,2),
    presshpa numeric(6,1)
);
INSERT INTO observatories VALUES
 ('Ridge North', 'Clear', 'Excellent', 0.950, 'New', 60.00, 'Quiet', 'Calm', '21:14:03', 20.00, 45.000, 3.20, 1012.0),
 ('Mesa Array', 'Cloudy', 'Poor', 0.610, 'Full', 12.50, 'Active', 'Storm', '02:40:55', 8.50, 80.500, 11.70, 998.4),
 ('Coast Dish', 'Windy', 'Average', 0.830, 'Waxing', 95.25, 'Quiet', 'Calm', '13:05:31', 15.00, 62.250, 14.10, 1020.6);

-- Constructed for pytest-queryeval's LiveSQLBench Management oracle: NOT the benchmark's data.
-- Three tables of the published `archeology` schema (livesqlbench.github.io
-- public/data/archeology/schema.json @1b6562e: `sites`, `scans`, `scanpointcloud`, their columns
-- and types as published, without the foreign keys to tables not built here); the rows are made
-- up. Instance M_3's test reads the first row of its view: ASD996783 is the first row of both
-- scans and scanpointcloud, so it comes first whichever side the planner scans first.
CREATE TABLE sites (
    zoneregistry varchar(12) PRIMARY KEY,
    zonelabel text, digunit varchar(50), gridtrace varchar(12), geox numeric(8,5),
    geoy numeric(8,5), heightm numeric(7,1), depthc numeric(7,1), phasefactor varchar(25),
    guessdate varchar(20), typesite varchar(25), presstat varchar(25), guardhint char(50),
    entrystat varchar(50), saferank varchar(15), insurstat varchar(15), riskeval text,
    healtheval varchar(12), envhaz char(50)
);
CREATE TABLE scans (
    questregistry varchar(16) PRIMARY KEY,
    chronotag timestamp, arcref varchar(50), crewref char(50),
    zoneref varchar(12) REFERENCES sites (zoneregistry), scancount smallint,
    climtune varchar(22), huecatch varchar(50), fmtfile char(4), gbsize numeric(5,2),
    pressratio numeric(4,2), spanmin numeric(5,2)
);
CREATE TABLE scanpointcloud (
    cloudregistry bigint PRIMARY KEY,
    crewref char(50), arcref varchar(50), scanresolmm numeric(5,2), pointdense integer,
    coverpct numeric(4,1), totalpts bigint, clouddense integer, lappct numeric(4,1),
    noisedb numeric(6,3), refpct numeric(4,1)
);
INSERT INTO sites (zoneregistry, zonelabel, typesite) VALUES
 ('SC5229', 'Tell Harun', 'Settlement'),
 ('SC1001', 'Cave of Lamps', 'Cave'),
 ('SC1002', 'River Ford', 'Crossing');
INSERT INTO scans (questregistry, chronotag, arcref, crewref, zoneref, scancount, fmtfile, gbsize) VALUES
 ('ASD996783', '2024-03-02 09:15:00', 'PR9945', 'CR01', 'SC5229', 4, 'E57', 12.50),  -- premium
 ('ASD100001', '2024-03-05 10:00:00', 'PR1001', 'CR02', 'SC1001', 2, 'LAS', 8.25),   -- premium
 ('ASD100002', '2024-03-07 11:30:00', 'PR1002', 'CR03', 'SC1001', 1, 'LAS', 3.10),   -- resolution 1.50 mm
 ('ASD100003', '2024-03-09 14:45:00', 'PR1003', 'CR04', 'SC5229', 3, 'E57', 6.00),   -- coverage 94 %
 ('ASD100004', '2024-03-11 08:20:00', 'PR1004', 'CR05', 'SC1002', 2, 'PLY', 4.75),   -- noise 1.8 dB
 ('ASD100005', '2024-03-13 16:05:00', 'PR1005', 'CR06', 'SC1002', 1, 'PLY', 2.00);   -- no point cloud
INSERT INTO scanpointcloud (cloudregistry, crewref, arcref, scanresolmm, pointdense, coverpct, totalpts, clouddense, lappct, noisedb, refpct) VALUES
 (1, 'CR01', 'PR9945', 0.80, 1500, 97.0, 5400000, 1450, 35.0, 1.200, 88.0),
 (2, 'CR02', 'PR1001', 0.50, 2000, 99.0, 8100000, 1980, 40.0, 0.800, 91.5),
 (3, 'CR03', 'PR1002', 1.50, 1200, 96.0, 2200000, 1150, 31.0, 0.500, 80.0),
 (4, 'CR04', 'PR1003', 0.90, 1100, 94.0, 3300000, 1090, 32.0, 0.700, 84.0),
 (5, 'CR05', 'PR1004', 0.70, 1300, 98.0, 4100000, 1280, 33.0, 1.800, 86.5);
